/** Sizes in bytes as the configuration writes them: a whole number, or with a unit (`32MiB`). */

const SIZE_UNITS = [
  ['GiB', 1024 ** 3],
  ['MiB', 1024 ** 2],
  ['KiB', 1024],
] as const;

/** Bytes of `text` (`256KiB`, `32MiB`, `1GiB`, `4096`), or NaN when it is not a size. */
export function readSize(text: string): number {
  const m = /^(\d{1,10})\s*(KiB|MiB|GiB)?$/.exec(text.trim());
  if (m === null) return NaN;
  const unit = SIZE_UNITS.find(([name]) => name === m[2]);
  return Number(m[1]) * (unit === undefined ? 1 : unit[1]);
}

/** Bytes in the largest unit that divides them exactly: 268435456 -> "256MiB", 1500 -> "1500". */
export function sizeText(bytes: number): string {
  for (const [name, size] of SIZE_UNITS) if (bytes > 0 && bytes % size === 0) return `${bytes / size}${name}`;
  return String(bytes);
}
