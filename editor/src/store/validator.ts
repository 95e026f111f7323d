/**
 * The flow validator (the shared one, bound to the default registry). Its own module so that the
 * editor loads it, and Ajv with it, after the first paint instead of in the main bundle.
 */
export { validate } from '@switchboard/nodes';
