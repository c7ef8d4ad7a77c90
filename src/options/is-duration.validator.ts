import { ValidateBy, ValidationOptions } from 'class-validator';
import { tryParseDuration } from '../domain/duration';

/** class-validator rule: the value is a {@link Duration} (`minMs` ≤ its milliseconds). */
export function IsDuration(minMs = 0, options?: ValidationOptions): PropertyDecorator {
  return ValidateBy(
    {
      name: 'isDuration',
      validator: {
        validate: (value) => {
          const ms = tryParseDuration(value);
          return ms !== undefined && ms >= minMs;
        },
        defaultMessage: (args) =>
          `${args?.property} must be a duration (milliseconds or a string like '500ms', '30s', '5m', '2h', '7d')` +
          (minMs > 0 ? ` of at least ${minMs}ms` : ''),
      },
    },
    options,
  );
}
