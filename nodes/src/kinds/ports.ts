import type { PortSpec } from '../kind.js';

/** Control flow enters on the left and leaves on the right; grants and observers come from above. */
export const FLOW_IN: PortSpec = {
  id: 'in',
  type: 'target',
  side: 'left',
  accepts: ['handover', 'delegate'],
};
export const FLOW_OUT: PortSpec = { id: 'out', type: 'source', side: 'right', accepts: ['handover'] };
export const TOOLS_IN: PortSpec = {
  id: 'tools',
  type: 'target',
  side: 'top',
  accepts: ['tools'],
  label: 'tools',
};
export const OBSERVE_IN: PortSpec = {
  id: 'observe',
  type: 'target',
  side: 'top',
  accepts: ['observe'],
  label: 'observers',
};
export const DELEGATE_OUT: PortSpec = {
  id: 'delegate',
  type: 'source',
  side: 'bottom',
  accepts: ['delegate'],
  label: 'delegates',
};
