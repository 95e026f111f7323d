/**
 * The template gallery: every flow in the repository's `flows/` folder, bundled at build time.
 * Files are kept as text so that opening one and exporting it gives back the same bytes; a file
 * that is not a usable flow is listed with its problem instead of breaking the gallery.
 */
export interface Template {
  file: string;
  text: string;
  name: string;
  description?: string;
  nodeCount: number;
  /** Why the file cannot be opened, if it cannot. */
  problem?: string;
}

// Flow tests (`*.tests.json`) live beside the flows but are not flows.
const files = import.meta.glob<string>(['../../../flows/*.json', '!../../../flows/*.tests.json'], {
  query: '?raw',
  import: 'default',
  eager: true,
});

export function describeTemplate(file: string, text: string): Template {
  const base = file
    .split('/')
    .pop()!
    .replace(/\.json$/, '');
  try {
    const v = JSON.parse(text) as { name?: unknown; description?: unknown; nodes?: unknown };
    return {
      file: base,
      text,
      name: typeof v.name === 'string' ? v.name : base,
      description: typeof v.description === 'string' ? v.description : undefined,
      nodeCount: Array.isArray(v.nodes) ? v.nodes.length : 0,
    };
  } catch (e) {
    return { file: base, text, name: base, nodeCount: 0, problem: `not JSON: ${(e as Error).message}` };
  }
}

export function templates(): Template[] {
  return Object.entries(files)
    .map(([path, text]) => describeTemplate(path, text))
    .sort((a, b) => a.file.localeCompare(b.file));
}
