/**
 * `Awaitable<T>`: what a repository method returns when one implementation answers at once
 * (better-sqlite3 is synchronous) and another later (PostgreSQL). Callers always `await`.
 */
export type Awaitable<T> = T | Promise<T>;
