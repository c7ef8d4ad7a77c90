import { DurableValidationError } from '../../src/errors';
import { resolveOptions } from '../../src/options/resolve-options';

/** The message resolveOptions throws for these options. */
function problem(options: Parameters<typeof resolveOptions>[0]): string {
  try {
    resolveOptions(options);
  } catch (err) {
    expect(err).toBeInstanceOf(DurableValidationError);
    return (err as Error).message;
  }
  throw new Error('the options were accepted');
}

describe('module options: the connection', () => {
  it('a url that is undefined (an unset environment variable) is named as such', () => {
    const message = problem({ url: process.env.SURELY_NOT_SET_DATABASE_URL });
    expect(message).toContain('url: is undefined (an environment variable that is not set?)');
  });

  it('neither url nor dataSource asks for one of them', () => {
    expect(problem({})).toContain('give `url` (a PostgreSQL connection string) or `dataSource`');
  });

  it('both url and dataSource asks for one only', () => {
    const dataSource = { query: async () => [], options: { type: 'postgres' } } as never;
    expect(problem({ url: 'postgres://localhost/x', dataSource })).toContain('give one of `dataSource` and `url`, not both');
  });

  it('an empty url is reported once, by its own check', () => {
    const message = problem({ url: '' });
    expect(message.match(/^ {2}- /gm)).toHaveLength(1);
    expect(message).toMatch(/url/);
  });

  it('a url alone is accepted', () => {
    expect(resolveOptions({ url: 'postgres://localhost/x' }).url).toBe('postgres://localhost/x');
  });
});

describe('module options: connectTimeout', () => {
  const url = 'postgres://localhost/x';

  it('a duration, kept in milliseconds; none given leaves it to the connection (a second past statementTimeout)', () => {
    expect(resolveOptions({ url, connectTimeout: '5s' }).connectTimeoutMs).toBe(5000);
    expect(resolveOptions({ url, connectTimeout: 250 }).connectTimeoutMs).toBe(250);
    expect(resolveOptions({ url }).connectTimeoutMs).toBeUndefined();
  });

  it('anything but a duration of at least 1 ms is refused, by name', () => {
    for (const connectTimeout of ['soon', 0, -1, '0s', true]) {
      expect(problem({ url, connectTimeout } as never)).toContain('connectTimeout: connectTimeout must be a duration');
    }
  });
});
