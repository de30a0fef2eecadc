// The package's public surface, by name: what the other packages and the tests use. Modules not
// named here are internal.
export { wecomCsPlatform } from './platform.js';
