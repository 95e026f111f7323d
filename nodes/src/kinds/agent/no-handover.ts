/** The re-ask an agent gets when it could hand over along several edges and called no handover tool. */
import type { Candidate, ToolPort } from '../../runtime-api.js';

export function reaskText(
  candidates: readonly Candidate[],
  handovers: ReadonlyMap<string, ToolPort>,
): string {
  const lines: string[] = [];
  for (const [name, port] of handovers) {
    const c = candidates.find((x) => x.edgeId === port.edgeId);
    const who = c ? `${c.label}${c.role ? ` (${c.role})` : ''}` : (port.edgeId ?? name);
    lines.push(`- ${name}: hand over to ${who}`);
  }
  return `You did not hand the work over. Your turn is not finished until you call exactly one of these tools:\n${lines.join('\n')}`;
}
