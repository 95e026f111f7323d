import { fileURLToPath } from 'node:url';
import react from '@vitejs/plugin-react';
import { defineConfig } from 'vite';

const src = (p: string) => fileURLToPath(new URL(p, import.meta.url));

export default defineConfig({
  plugins: [react()],
  resolve: {
    // The editor bundles the sources of the headless packages; it never imports the runtime.
    alias: {
      // Subpaths before their package: an alias also matches `<key>/…`.
      '@switchboard/schemas/core': src('../schemas/src/core.ts'),
      '@switchboard/schemas/ydoc': src('../schemas/src/ydoc.ts'),
      '@switchboard/schemas': src('../schemas/src/index.ts'),
      '@switchboard/nodes/core': src('../nodes/src/core.ts'),
      '@switchboard/nodes': src('../nodes/src/index.ts'),
    },
  },
  // The manifest tells the benchmark and the bundle-size test which chunks the first load fetches.
  build: { outDir: 'dist', sourcemap: true, manifest: true },
});
