import { defaultRegistry } from '@switchboard/nodes';

export function App() {
  return (
    <main>
      <h1>Switchboard</h1>
      <ul data-testid="palette">
        {defaultRegistry.list().map((k) => (
          <li key={k.kind}>{k.display.label}</li>
        ))}
      </ul>
    </main>
  );
}
