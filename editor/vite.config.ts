import { fileURLToPath } from 'node:url';
import react from '@vitejs/plugin-react';
import { defineConfig } from 'vite';

const src = (p: string) => fileURLToPath(new URL(p, import.meta.url));

export default defineConfig({
  plugins: [react()],
  resolve: {
    // The editor bundles the sources of the headless packages; it never imports the runtime.
    alias: {
      '@switchboard/schemas': src('../schemas/src/index.ts'),
      '@switchboard/nodes': src('../nodes/src/index.ts'),
    },
  },
  build: { outDir: 'dist', sourcemap: true },
});
