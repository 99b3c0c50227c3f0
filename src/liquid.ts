/**
 * The LiquidJS engine of notifier templates (src/notify/templates.ts renders with it), sandboxed
 * and bounded: an in-memory empty template map, own properties only, strict filters, limits on
 * parse length, render time and memory. The configuration checks templates with the same engine
 * (`templateProblem`), so a template that loads is one that parses.
 */
import { createRequire } from 'node:module';
import type { Liquid } from 'liquidjs';
import { errorMessage } from './errors.js';

/** Bounds of one template: parse length (characters), render time (ms) and memory (bytes of output and arrays). */
export const LIMITS = { parse: 20_000, renderMs: 500, memory: 1_000_000 } as const;

/**
 * LiquidJS is loaded on first use, not at start: most configurations have no template, and a
 * daemon without one is spared its memory.
 */
const load = createRequire(import.meta.url);

/** A sandboxed, bounded engine; `outputEscape` escapes every output (the HTML channels). */
export function liquidEngine(outputEscape?: (value: unknown) => string): Liquid {
  const { Liquid: Engine } = load('liquidjs') as { Liquid: typeof Liquid };
  return new Engine({
    templates: {},
    ownPropertyOnly: true,
    strictFilters: true,
    parseLimit: LIMITS.parse,
    renderLimit: LIMITS.renderMs,
    memoryLimit: LIMITS.memory,
    ...(outputEscape ? { outputEscape } : {}),
  });
}

let checker: Liquid | undefined;

/** Why a template does not parse (`line 3, column 5: ...`), or undefined when it parses. */
export function templateProblem(text: string): string | undefined {
  try {
    (checker ??= liquidEngine()).parse(text);
    return undefined;
  } catch (err) {
    const token = (err as { token?: { getPosition?: () => [number, number] } }).token;
    const position = token?.getPosition?.();
    // LiquidJS messages end with ", line:3, col:5": say it in words instead.
    const message = errorMessage(err).replace(/,?\s*line:\d+, col:\d+$/, '');
    return position ? `template does not parse at line ${position[0]}, column ${position[1]}: ${message}` : `template does not parse: ${message}`;
  }
}
