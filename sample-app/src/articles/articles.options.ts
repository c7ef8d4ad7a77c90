import type { Duration } from 'nestjs-durable';

/** Options of {@link ArticlesModule.register}. */
export interface ArticlesOptions {
  /**
   * How long `process_article` waits, in its `catch_up` step, for a save made while the article
   * was being processed (`'30s'`, `'5m'`, or milliseconds).
   */
  catchUpTimeout: Duration;
}

/** Injection token of the {@link ArticlesOptions}. */
export const ARTICLES_OPTIONS = Symbol('ARTICLES_OPTIONS');

/** The catch-up window when neither the app nor `ARTICLE_CATCH_UP_TIMEOUT` sets one (the spec's). */
export const DEFAULT_CATCH_UP_TIMEOUT: Duration = '5m';
