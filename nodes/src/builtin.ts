/** The one place the built-in kinds are registered. */

import type { NodeKindDefinition } from './kind.js';
import { agentKind } from './kinds/agent/index.js';
import { deciderKind } from './kinds/decider/index.js';
import { endKind } from './kinds/end/index.js';
import { humanKind } from './kinds/human/index.js';
import { noteKind } from './kinds/note/index.js';
import { observerKind } from './kinds/observer/index.js';
import { startKind } from './kinds/start/index.js';
import { teamKind } from './kinds/team/index.js';
import { toolKind } from './kinds/tool/index.js';
import { KindRegistry } from './registry.js';

export const BUILTIN_KINDS: readonly NodeKindDefinition[] = [
  startKind,
  endKind,
  agentKind,
  teamKind,
  deciderKind,
  observerKind,
  toolKind,
  humanKind,
  noteKind,
] as unknown as NodeKindDefinition[];

/** A registry holding the built-in kinds; extend it with `register()`. */
export function createRegistry(): KindRegistry {
  const r = new KindRegistry();
  for (const k of BUILTIN_KINDS) r.register(k);
  return r;
}

/** The registry hosts use unless they add kinds of their own. */
export const defaultRegistry: KindRegistry = createRegistry();
