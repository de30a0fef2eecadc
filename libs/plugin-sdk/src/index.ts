export { runPlugin, type EventContext, type EventHandler, type Handlers, type PluginOptions, type RunningPlugin } from './plugin.js';
export * from './wire.js';
