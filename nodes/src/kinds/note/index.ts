import { Type } from '@sinclair/typebox';
import { defineKind } from '../../kind.js';

export const NoteConfig = Type.Object(
  { text: Type.String({ description: 'Markdown shown on the canvas; the runtime ignores notes.' }) },
  { additionalProperties: false },
);

export const noteKind = defineKind({
  kind: 'note',
  role: 'note',
  configSchema: NoteConfig,
  defaults: () => ({ text: '' }),
  ports: [],
  display: {
    label: 'Note',
    color: '#ca8a04',
    icon: '✎',
    description: 'A comment on the canvas.',
    category: 'canvas',
    size: { width: 220, height: 120 },
  },
  summary: (c) => c.text.slice(0, 80),
});
