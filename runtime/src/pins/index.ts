export { pinnedBehaviors, pinProblem, stalePins } from './behavior.js';
export { PinError, type PinSource, parsePinFlag, parsePinRef, pinFromRun } from './extract.js';
