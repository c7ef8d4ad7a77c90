// Stops the PostgreSQL started by global-setup.js (embedded or container); nothing to do for DATABASE_URL.
module.exports = async function globalTeardown() {
  const pg = globalThis.__DURABLE_PG__;
  if (pg) {
    globalThis.__DURABLE_PG__ = undefined;
    await pg.stop();
  }
};
