/**
 * Issue 13, part 4: a scripted model's `scriptFile` reads nothing outside its folder. Before the
 * fix it was read with `readFileSync`, unconfined, when a run started: errors quoted
 * `/etc/passwd`, a FIFO stalled the process, `/dev/zero` killed it. Now: a relative path inside
 * the flow's folder (CLI) or `<data>/scripts/` (server), symlinks resolved and confined, regular
 * files only, a size limit, an asynchronous read, and errors that name the path and the rule but
 * never the content. Real files, a real FIFO, the real CLI entry and a real server.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { validate } from '@switchboard/nodes';
import type { Flow } from '@switchboard/schemas';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { collectRun } from '../../runtime/src/engine/testing/index.js';
import { SCRIPT_FILE_MAX_BYTES } from '../../runtime/src/models/script-file.js';
import { simpleFlow, testServer, until } from '../server/helpers.js';
import { cli } from '../support/cli.js';

const dir = mkdtempSync(join(tmpdir(), 'sb-script-file-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** What must never show up in an error: the first line of /etc/passwd and its shape. */
const PASSWD = /root:|:0:0:|\/bin\/(ba)?sh/;

/** `simpleFlow` whose model reads its replies from `scriptFile`. */
function withScriptFile(scriptFile: string, id = 'scripted-file'): Flow {
  const f = simpleFlow(id);
  f.models = { default: { provider: 'scripted', scriptFile } };
  return f;
}

function prepare(base: string): void {
  mkdirSync(base, { recursive: true });
  writeFileSync(
    join(base, 'good.json'),
    JSON.stringify({ script: [{ fallback: true, text: 'from the file' }] }),
  );
  symlinkSync('/etc/passwd', join(base, 'passwd-link.json'));
  symlinkSync('/dev/zero', join(base, 'zero-link.json'));
  execFileSync('mkfifo', [join(base, 'fifo.json')]);
  writeFileSync(join(base, 'huge.json'), `[${'"x",'.repeat(SCRIPT_FILE_MAX_BYTES / 4)}"x"]`);
}

const REFUSED: Array<[string, string, RegExp]> = [
  ['an absolute path (/etc/passwd)', '/etc/passwd', /not an absolute path/],
  [
    'a path out of the folder (../…/etc/passwd)',
    '../../../../../../etc/passwd',
    /must not leave the flow’s folder/,
  ],
  ['an absolute device (/dev/zero)', '/dev/zero', /not an absolute path/],
  ['a symlink out of the folder (to /etc/passwd)', 'passwd-link.json', /outside/],
  ['a symlink out of the folder (to /dev/zero)', 'zero-link.json', /outside/],
  ['a FIFO', 'fifo.json', /not a regular file/],
  ['a file over the size limit', 'huge.json', new RegExp(`limit of ${SCRIPT_FILE_MAX_BYTES}`)],
];

describe('the engine (library use, validation off) reads only confined script files', () => {
  const base = join(dir, 'lib');
  beforeAll(() => prepare(base));

  it.each(REFUSED)(
    'refuses %s, naming the path and the rule, never the content',
    async (_what, file, rule) => {
      const t = Date.now();
      const { result } = await collectRun(withScriptFile(file), 'go', { validate: false, baseDir: base });
      expect(result.status).toBe('failed');
      expect(result.error?.message).toContain(
        `models.default.scriptFile: ${JSON.stringify(file)} is refused`,
      );
      expect(result.error?.message).toMatch(rule);
      expect(result.error?.message).not.toMatch(PASSWD);
      expect(Date.now() - t).toBeLessThan(10_000);
    },
  );

  it('reads a good file inside the folder', async () => {
    const { result } = await collectRun(withScriptFile('good.json'), 'go', {
      validate: false,
      baseDir: base,
    });
    expect(result).toMatchObject({ status: 'completed', output: 'from the file' });
  });
});

describe('the validator refuses a scriptFile that leaves its folder by its shape', () => {
  it.each(['/etc/passwd', '/dev/zero', '../secret.json', 'a/../../b.json', 'C:\\Windows\\win.ini'])(
    '%s',
    (file) => {
      const v = validate(withScriptFile(file));
      expect(v.errors).toContainEqual(
        expect.objectContaining({ code: 'script-file-path', path: '/models/default/scriptFile' }),
      );
    },
  );
});

describe('the CLI: validate and run check script files in the flow file’s folder', () => {
  const base = join(dir, 'cli');
  beforeAll(() => {
    prepare(base);
    for (const [name, file] of [
      ['abs', '/etc/passwd'],
      ['link', 'passwd-link.json'],
      ['fifo', 'fifo.json'],
      ['huge', 'huge.json'],
      ['good', 'good.json'],
    ] as const)
      writeFileSync(join(base, `${name}.flow.json`), JSON.stringify(withScriptFile(file)));
  });

  it.each([
    ['abs', 'script-file-path', /not an absolute path/],
    ['link', 'script-file', /outside/],
    ['fifo', 'script-file', /not a regular file/],
    ['huge', 'script-file', /limit/],
  ])('%s: validate and run exit with the rule, no content', async (name, code, rule) => {
    const file = join(base, `${name}.flow.json`);
    for (const args of [
      ['validate', file],
      ['run', file, '--input', 'go'],
    ]) {
      const r = await cli(...args);
      expect(r.code, r.err).not.toBe(0);
      expect(r.err).toContain(`${file}: /models/default/scriptFile: `);
      expect(r.err).toContain(`[${code}]`);
      expect(r.err).toMatch(rule);
      expect(r.err + r.out).not.toMatch(PASSWD);
    }
  });

  it('a good file validates and runs', async () => {
    const file = join(base, 'good.flow.json');
    expect((await cli('validate', file)).code).toBe(0);
    const r = await cli('run', file, '--input', 'go', '--events', 'none');
    expect(r.code, r.err).toBe(0);
    expect(r.out).toContain('from the file');
  });
});

describe('the server reads script files from <data>/scripts/ only', () => {
  let s: Awaited<ReturnType<typeof testServer>>;
  beforeAll(async () => {
    s = await testServer();
    prepare(join(s.dir, 'scripts'));
    // A file in the server's working directory is not reachable either.
    writeFileSync(join(s.dir, 'outside.json'), JSON.stringify(['outside']));
  });
  afterAll(async () => {
    await s.close();
  });
  const json = (method: string, url: string, body?: unknown) =>
    s.req({
      method,
      url,
      ...(body === undefined
        ? {}
        : { payload: JSON.stringify(body), headers: { 'content-type': 'application/json' } }),
    });
  async function runInline(scriptFile: string) {
    const r = await json('POST', '/api/runs', { flow: withScriptFile(scriptFile), input: 'go' });
    if (r.statusCode !== 201) return { start: r, run: undefined };
    const id = r.json().run?.id ?? r.json().id;
    const run = await until(async () => {
      const x = (await json('GET', `/api/runs/${id}`)).json().run;
      return /completed|failed|cancelled|interrupted/.test(x.status) ? x : undefined;
    }, `run ${id} ends`);
    return { start: r, run };
  }

  it('PUT of a flow whose scriptFile is /etc/passwd: 400 with the rule', async () => {
    const r = await json('PUT', '/api/flows/abs', { ...withScriptFile('/etc/passwd'), id: 'abs' });
    expect(r.statusCode).toBe(400);
    expect(r.body).toContain('script-file-path');
    expect(r.body).not.toMatch(PASSWD);
  });

  it.each([
    ['a symlink to /etc/passwd', 'passwd-link.json', /outside/],
    ['a symlink to /dev/zero', 'zero-link.json', /outside/],
    ['a FIFO (the server does not stall)', 'fifo.json', /not a regular file/],
    ['a file over the limit', 'huge.json', /limit/],
    ['a file in the data directory but not in scripts/', '../outside.json', /leave/],
  ])('%s: refused, the error names the rule, not the content', async (_what, file, rule) => {
    const { start, run } = await runInline(file);
    if (!run) {
      expect(start.statusCode).toBe(400);
      expect(start.body).toMatch(rule);
      expect(start.body).not.toMatch(PASSWD);
      return;
    }
    expect(run.status).toBe('failed');
    expect(run.error.message).toMatch(rule);
    expect(JSON.stringify(run)).not.toMatch(PASSWD);
    const events = await json('GET', `/api/runs/${run.id}/events`);
    expect(events.statusCode).toBe(200);
    expect(events.body).not.toMatch(PASSWD);
    expect((await json('GET', '/api/health')).statusCode).toBe(200);
  });

  it('a file in <data>/scripts/ is read', async () => {
    const { run } = await runInline('good.json');
    expect(run).toMatchObject({ status: 'completed', output: 'from the file' });
  });
});
