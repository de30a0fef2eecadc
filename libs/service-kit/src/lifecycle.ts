/**
 * Process-wide state read by readiness: `started` once the role's own start (its subscriptions,
 * consumers, timers) has finished, so nothing is routed to a replica that does not listen yet;
 * `draining` on shutdown, so a draining pod leaves the load balancer first.
 */
export const lifecycle = { started: false, draining: false };
