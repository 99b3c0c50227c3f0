/** A one-line sparkline of numeric values (nulls and gaps shown as spaces). */
const BARS = '▁▂▃▄▅▆▇█';

export function sparkline(values: readonly (number | null)[], width = 60): string {
  if (values.length === 0) return '';
  // Down-sample to `width` columns by averaging.
  const columns = Math.min(width, values.length);
  const cells: (number | null)[] = [];
  for (let c = 0; c < columns; c++) {
    const slice = values.slice(Math.floor((c * values.length) / columns), Math.floor(((c + 1) * values.length) / columns));
    const nums = slice.filter((v): v is number => v !== null);
    cells.push(nums.length === 0 ? null : nums.reduce((a, b) => a + b, 0) / nums.length);
  }
  const nums = cells.filter((v): v is number => v !== null);
  if (nums.length === 0) return ' '.repeat(columns);
  const min = Math.min(...nums);
  const max = Math.max(...nums);
  return cells
    .map((v) => {
      if (v === null) return ' ';
      const index = max === min ? 3 : Math.round(((v - min) / (max - min)) * (BARS.length - 1));
      return BARS[index];
    })
    .join('');
}
