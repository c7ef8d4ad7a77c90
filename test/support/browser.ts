import { existsSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import puppeteer, { type Browser } from 'puppeteer-core';
import type { TestApp } from './app';

/** Where Debian puts its Chromium (`chromium-headless-shell`, else `chromium`); `CHROMIUM_PATH` wins. */
const CANDIDATES = ['/usr/bin/chromium-headless-shell', '/usr/lib/chromium/chromium-headless-shell', '/usr/bin/chromium', '/usr/lib/chromium/chromium'];

/** The Chromium binary the browser tests drive (.ci/run installs Debian's `chromium-headless-shell`). */
export function chromiumPath(): string {
  const path = [process.env.CHROMIUM_PATH, ...CANDIDATES].find((p): p is string => !!p && existsSync(p));
  if (!path) throw new Error(`no Chromium found (tried ${CANDIDATES.join(', ')}); install Debian's chromium-headless-shell or set CHROMIUM_PATH`);
  return path;
}

/** A headless Chromium (no sandbox: tests run as root in CI containers); close it when done. */
export function launchBrowser(): Promise<Browser> {
  return puppeteer.launch({
    executablePath: chromiumPath(),
    headless: 'shell',
    args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'],
  });
}

/** Makes a test app's HTTP server listen on a free local port; returns its origin (`http://127.0.0.1:port`). */
export async function listen(t: TestApp): Promise<string> {
  const server = t.server as import('node:http').Server;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}
