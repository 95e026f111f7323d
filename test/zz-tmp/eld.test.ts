import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { it } from 'vitest';
import { createServer } from '../../runtime/src/server/index.js';
import { batteryFlow } from '../crash/fixture.js';
import { startWorker } from '../redis/cluster.js';
import { startRedis } from '../redis/redis-server.js';

it('eld', async () => {
  const redis = await startRedis({ appendonly: true });
  const server = await createServer({ dataDir: mkdtempSync(join(tmpdir(), 'eld-')), port: 0, editorDir: false, templatesDir: false, redis: { url: redis.url } });
  const url = (await server.listen()).url;
  const env = { NODE_OPTIONS: '--import=/tmp/eld.mjs' };
  const c = join(mkdtempSync(join(tmpdir(), 'eldc-')), 'c.txt');
  const ws = await Promise.all([startWorker(redis.url, mkdtempSync(join(tmpdir(), 'eldw-')), c, 4, env), startWorker(redis.url, mkdtempSync(join(tmpdir(), 'eldw-')), c, 4, env)]);
  const t = Date.now();
  const ids: string[] = [];
  for (let i = 0; i < 200; i++) {
    const res = await fetch(`${url}/api/runs`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ flow: batteryFlow(5), input: 'go' }) });
    ids.push(((await res.json()) as any).run.id);
  }
  for (const id of ids) await server.runs.settled(id);
  console.log('runs took', Date.now() - t);
  await new Promise((r) => setTimeout(r, 2100));
  for (const w of ws) { console.log(w.stderr().split('\n').filter((l) => l.startsWith('ELD')).join('\n')); await w.stop(); }
  await server.close();
  await redis.stop();
}, 300_000);
