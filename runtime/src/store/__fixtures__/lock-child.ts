/** Child process for the lock test: opens a store, reports, then holds it until stdin closes. */
import { Store } from '../store.js';

try {
  const store = await Store.open(process.argv[2]!);
  process.stdout.write(`opened ${store.tookOverFrom ?? ''}\n`);
  process.stdin.resume();
  process.stdin.on('end', () => {
    void store.close().then(() => process.exit(0));
  });
} catch (e) {
  process.stdout.write(`refused ${(e as Error).message}\n`);
  process.exit(1);
}
