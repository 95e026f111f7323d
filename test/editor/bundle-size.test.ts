/**
 * The editor's first load stays small: the entry chunk of the production build is at most
 * 500 KB minified, and the heavy parts (the validator with Ajv, in the page and in its worker, the
 * layout engine, the trace panel, the flow settings) are loaded only when needed. Reads the build manifest
 * (needs `pnpm --filter @switchboard/editor build`).
 */
import { describe, expect, it } from 'vitest';
import { bundleSizes } from '../../editor/bench/bundle.js';

const MAIN_LIMIT = 500 * 1024;

describe('editor bundle', () => {
  const sizes = bundleSizes();

  it('keeps the main chunk at or under 500 KB minified', () => {
    console.log(
      `main ${(sizes.main.bytes / 1024).toFixed(1)} KB, first load ${(sizes.firstLoadBytes / 1024).toFixed(1)} KB`,
    );
    expect(sizes.main.bytes).toBeGreaterThan(0);
    expect(sizes.main.bytes).toBeLessThanOrEqual(MAIN_LIMIT);
  });

  it('loads the validator, the layout engine, the trace and the settings panels only when needed', () => {
    for (const part of ['validator', 'validate.worker', 'elk', 'TracePanel', 'FlowSettings']) {
      const chunk = sizes.chunks.find((c) => c.file.includes(part));
      expect(chunk, `a chunk of its own for ${part}`).toBeDefined();
      expect(chunk!.firstLoad, `${part} is not part of the first load`).toBe(false);
    }
  });
});
