/** Runs the CLI from its sources in a child process: `cli-main.ts <args…>`. */
import { main } from '../../runtime/src/cli/main.js';

process.exitCode = await main(process.argv);
