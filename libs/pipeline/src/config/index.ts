// The pipeline config alone (defaults, coercion, schema, validation), free of Node-only dependencies:
// the web console bundles this entry to build and check its pipeline form in the browser.
export * from '../defaults.js';
export * from './coerce.js';
export * from './schema.js';
export * from './load.js';
