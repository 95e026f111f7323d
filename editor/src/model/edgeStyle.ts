/** Colours of the four edge kinds, shared by edge strokes, arrow heads and the legend. */
export const EDGE_COLORS: Record<string, string> = {
  handover: '#64748b',
  tools: '#7c3aed',
  delegate: '#0891b2',
  observe: '#db2777',
};
