/** The alert engine: pure state machine, silences, inhibition, built-in gateway alerts, grouping. */
export * from './types.js';
export * from './state.js';
export * from './silences.js';
export * from './acks.js';
export * from './inhibit.js';
export * from './hold-back.js';
export * from './gateway.js';
export * from './engine.js';
export * from './group.js';
export * from './message.js';
