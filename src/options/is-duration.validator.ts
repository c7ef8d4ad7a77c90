import { ValidateBy, ValidationOptions } from 'class-validator';
import { MAX_TIMER_MS, tryParseDuration } from '../domain/duration';

/** class-validator rule: the value is a {@link Duration} (`minMs` ≤ its milliseconds ≤ `maxMs`). */
export function IsDuration(minMs = 0, maxMs = MAX_TIMER_MS, options?: ValidationOptions): PropertyDecorator {
  return ValidateBy(
    {
      name: 'isDuration',
      validator: {
        validate: (value) => {
          const ms = tryParseDuration(value);
          return ms !== undefined && ms >= minMs && ms <= maxMs;
        },
        defaultMessage: (args) =>
          `${args?.property} must be a duration (milliseconds or a string like '500ms', '30s', '5m', '2h', '7d')` +
          (minMs > 0 ? ` of at least ${minMs}ms` : '') +
          (maxMs < Infinity ? ` and at most ${maxMs}ms` : ''),
      },
    },
    options,
  );
}
