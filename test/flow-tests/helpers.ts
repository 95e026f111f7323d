/** Shared by the flow-tests tests: runs stored in a data directory the way the server stores them. */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

export /** Runs a flow through the server's run manager into a data directory and returns its run id. */
async function storeRun(
  data: string,
  flowFile: string,
  input: string,
  answers: Record<string, string>,
): Promise<string> {
  const { Store } = await import('../../runtime/src/store/store.js');
  const { RunManager } = await import('../../runtime/src/server/run-manager.js');
  const { createMcpToolHost } = await import('../../runtime/src/tools/mcp-host.js');
  const { TrustStore } = await import('../../runtime/src/mcp/trust.js');
  const store = await Store.open(data);
  try {
    const trust = new TrustStore(join(data, 'trust.json'));
    const runs = new RunManager({
      store,
      humanInput: 'fail',
      tools: ({ flow }) => createMcpToolHost(flow, { trust }),
    });
    const flow = JSON.parse(readFileSync(flowFile, 'utf8'));
    const rec = await runs.start({ flow, input, answers, source: 'cli' });
    await runs.settled(rec.id);
    return rec.id;
  } finally {
    await store.close();
  }
}
