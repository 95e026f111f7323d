import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

const src = (p: string) => fileURLToPath(new URL(p, import.meta.url));

export default defineConfig({
  resolve: {
    // Tests run against the TypeScript sources; `pnpm build` is only for the CLI and the editor bundle.
    alias: {
      // Subpaths before their package: an alias also matches `<key>/…`.
      '@switchboard/schemas/core': src('./schemas/src/core.ts'),
      '@switchboard/schemas/ydoc': src('./schemas/src/ydoc.ts'),
      '@switchboard/schemas': src('./schemas/src/index.ts'),
      '@switchboard/nodes/core': src('./nodes/src/core.ts'),
      '@switchboard/nodes': src('./nodes/src/index.ts'),
      '@switchboard/runtime': src('./runtime/src/index.ts'),
    },
  },
  test: {
    include: ['{schemas,nodes,runtime,editor}/src/**/*.test.{ts,tsx}', 'test/**/*.test.ts'],
    exclude: ['**/node_modules/**', '**/dist/**'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // Unhandled rejections and uncaught exceptions fail the whole run (vitest's default; kept explicit).
    dangerouslyIgnoreUnhandledErrors: false,
  },
});
