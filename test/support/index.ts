export * from './app';
export * from './child';
export * from './db';
export * from './wait';
export * from './phase';
export * from './pg-proxy';
export * from './wait-timeout-race';
export * from './clock';
