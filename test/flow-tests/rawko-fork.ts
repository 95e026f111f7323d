/** The rawko run the fork tests start from, and the flow as edited for the fork. */
import type { Flow } from '@switchboard/schemas';

export const INPUT = 'Add slugify(text) in slug.mjs with tests';
export const GUIDANCE =
  'Lower-case first, replace runs of other characters with one dash, trim dashes at both ends.';

/** The flow as edited for the fork: a reviewer that asks for changes, and what follows from that. */
export function editedRawko(flow: Flow): Flow {
  const f = structuredClone(flow);
  f.models.default = {
    provider: 'scripted',
    script: [
      { node: 'reviewer', text: 'CHANGES: slugify must also fold accents (é → e); add a test for it.' },
      {
        node: 'developer',
        json: { status: 'done', summary: 'Accents are folded; three tests pass.', files: ['slug.mjs'] },
      },
      { node: 'reviewer', text: 'LGTM after the accent fix.' },
    ],
  };
  f.models.arbiter = {
    provider: 'scripted',
    script: [
      { node: 'arbiter', json: { choice: 'review-fixes', reason: 'The reviewer asked for changes.' } },
      { node: 'arbiter', json: { choice: 'dev-to-review', reason: 'Fixed: review again.' } },
      { node: 'arbiter', json: { choice: 'done', reason: 'Approved.' } },
    ],
  };
  return f;
}
