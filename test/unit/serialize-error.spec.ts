/** What a run's `error` records of anything a step throws. */
import { serializeError } from '../../src/domain/serialize-error';

describe('serializeError', () => {
  it('an Error: its name, message, string code and the top of its stack', () => {
    const err = Object.assign(new TypeError('bad'), { code: 'E_BAD' });
    expect(serializeError(err)).toEqual({ name: 'TypeError', message: 'bad', code: 'E_BAD', stack: expect.stringContaining('TypeError: bad') });
  });

  it('an object shaped like an error keeps its fields', () => {
    expect(serializeError({ code: 'E_X', message: 'plain object' })).toEqual({ name: 'Error', message: 'plain object', code: 'E_X' });
    expect(serializeError({ name: 'HttpError', message: 'nope', code: 404, stack: 'HttpError: nope\n    at x' })).toEqual({
      name: 'HttpError',
      message: 'nope',
      stack: 'HttpError: nope\n    at x',
    });
  });

  it('anything else is the message: a string as is, other values as JSON', () => {
    expect(serializeError('boom')).toEqual({ name: 'Error', message: 'boom' });
    expect(serializeError(42)).toEqual({ name: 'Error', message: '42' });
    expect(serializeError(null)).toEqual({ name: 'Error', message: 'null' });
    expect(serializeError({ message: 7 })).toEqual({ name: 'Error', message: '{"message":7}' });
  });

  it('never throws, and stores no NUL', () => {
    const hostile = new Proxy(
      {},
      {
        get: () => {
          throw new Error('trap');
        },
      },
    );
    expect(serializeError(hostile).name).toBe('Error');
    // even instanceof throws on this one
    const opaque = new Proxy(
      {},
      {
        getPrototypeOf: () => {
          throw new Error('trap');
        },
      },
    );
    expect(serializeError(opaque)).toEqual({ name: 'Error', message: '[a value that cannot be read]' });
    expect(serializeError({ message: 'a\u0000b' })).toEqual({ name: 'Error', message: 'a\uFFFDb' });
  });
});
