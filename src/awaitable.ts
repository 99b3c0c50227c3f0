/**
 * `Awaitable<T>`: what a repository method returns when one implementation answers at once
 * (better-sqlite3 is synchronous) and another later (PostgreSQL). Callers always `await`.
 */
export type Awaitable<T> = T | Promise<T>;

/**
 * An interface whose methods may answer later: what a network database offers for an interface
 * that is still synchronous (the test-call and recording repositories; docs/storage.md, "PostgreSQL").
 */
export type AwaitableMethods<T> = {
  [K in keyof T]: T[K] extends (...args: infer A) => infer R ? (...args: A) => Awaitable<R> : T[K];
};
