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
  build: {
    outDir: 'dist',
    sourcemap: true,
    manifest: true,
    rolldownOptions: {
      output: {
        // Libraries in chunks of their own: they change less often than the editor (cached across
        // releases) and keep the entry chunk small. What only a lazy part uses (Ajv, elk) stays
        // in that part's chunk.
        codeSplitting: {
          groups: [
            { name: 'react', test: /node_modules[\\/](react|react-dom|scheduler)[\\/]/ },
            {
              name: 'xyflow',
              test: /node_modules[\\/](@xyflow|d3-[a-z-]+|zustand|classcat)[\\/]/,
            },
            { name: 'yjs', test: /node_modules[\\/](yjs|lib0|y-protocols|y-websocket)[\\/]/ },
          ],
        },
      },
    },
  },
});
