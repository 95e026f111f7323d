#!/usr/bin/env node
// Runs the built CLI; `pnpm build` produces runtime/dist.
import { main } from '../dist/cli/main.js';

main(process.argv).then(
  (code) => {
    process.exitCode = code;
  },
  (err) => {
    console.error(`switchboard: ${err instanceof Error ? err.message : String(err)}`);
    process.exitCode = 1;
  },
);
