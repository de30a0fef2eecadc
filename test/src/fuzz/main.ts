// `npm run fuzz -- [runs=10000] [seed] [category ...]`: the property-based fuzz suite against a whole
// Conveyor (and the config loader), with a summary table per category. Exits 1 when anything failed.
import { CATEGORIES, formatDeadLetters, runFuzz, type Category } from './suite.js';
import { formatFailures, formatTable } from './report.js';

function isCategory(value: string): value is Category {
  return (CATEGORIES as readonly string[]).includes(value);
}

const args = process.argv.slice(2);
const numbers = args.filter((a) => /^\d+$/.test(a)).map(Number);
const categories = args.filter((a) => !/^\d+$/.test(a));
const unknown = categories.filter((c) => !isCategory(c));
if (unknown.length > 0) {
  console.error(`unknown categories: ${unknown.join(', ')}; choose from ${CATEGORIES.join(', ')}`);
  process.exit(2);
}
const runs = numbers[0] ?? 10_000;
const seed = numbers[1] ?? Date.now() % 2 ** 31;
console.log(`fuzz: ${runs} inputs, seed ${seed}${categories.length ? `, ${categories.join(' ')}` : ''} (repeat with: npm run fuzz -- ${runs} ${seed}${categories.length ? ` ${categories.join(' ')}` : ''})`);
const started = Date.now();
const { reports, otherDeadLetters } = await runFuzz({ runs, seed, categories: categories.filter(isCategory), log: (line) => console.log(`  ${line}`) });
console.log(`\n${formatTable(reports)}\n`);
console.log(`${((Date.now() - started) / 1000).toFixed(0)} s`);
if (otherDeadLetters.length > 0) console.log(`\ndead letters of the system's own messages (not bus fuzz payloads):\n${formatDeadLetters(otherDeadLetters)}`);
const failures = reports.reduce((n, r) => n + r.failures.length, 0);
if (failures > 0) console.log(`\nfailures:\n${formatFailures(reports)}`);
process.exit(failures > 0 ? 1 : 0);
