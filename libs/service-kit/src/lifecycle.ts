/** Process-wide shutdown state, read by readiness so a draining pod leaves the load balancer first. */
export const lifecycle = { draining: false };
