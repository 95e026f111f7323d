/** Child process for the atomic-write crash test: writes argv[3] to argv[2] atomically. */
import { writeFileAtomic } from '../atomic.js';

const [file, data] = process.argv.slice(2);
await writeFileAtomic(file!, data!);
process.stdout.write('done\n');
