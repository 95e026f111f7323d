/** Default limits of a run; flows and run options override the budgets. */

/** Default step budget per run (flow `budgets.maxSteps` and `options.budgets` override it). */
export const DEFAULT_MAX_STEPS = 1000;
/** Nested (delegated) runs deeper than this are refused with an error result. */
export const MAX_DELEGATION_DEPTH = 8;
