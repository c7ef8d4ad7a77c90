import { Type } from 'class-transformer';
import { IsArray, IsBoolean, IsIn, IsInt, IsOptional, IsString, Matches, Max, MaxLength, Min, MinLength, ValidateIf, ValidateNested } from 'class-validator';
import { IsDuration } from './is-duration.validator';
import { MAX_SPAN_MS, type Duration } from '../domain/duration';
import { MIN_NODE_TIMEOUT_MS, SCHEMA_NAME } from './option-limits';

/** Validation shape of {@link WorkerOptions}. */
export class WorkerOptionsDto {
  @IsOptional() @IsInt() @Min(1) @Max(10_000) concurrency?: number;
  @IsOptional() @IsInt() @Min(0) @Max(100_000) prefetch?: number;
  @IsOptional() @IsDuration(1) pollInterval?: Duration;
  @IsOptional() @IsArray() @IsString({ each: true }) @MinLength(1, { each: true }) workflows?: string[];
}

/** Validation shape of {@link RetentionOptions}. */
export class RetentionOptionsDto {
  @IsOptional() @ValidateIf((_, v) => v !== false) @IsDuration(1, MAX_SPAN_MS) runs?: Duration | false;
  @IsOptional() @IsDuration(1, MAX_SPAN_MS) activity?: Duration;
  @IsOptional() @IsDuration(1, MAX_SPAN_MS) keys?: Duration;
}

/** Validation shape of the module options (the DataSource itself is checked by hand). */
export class DurableOptionsDto {
  @IsOptional() @IsString() @MinLength(1) url?: string;

  @IsOptional()
  @IsString()
  @Matches(SCHEMA_NAME.pattern, { message: SCHEMA_NAME.message })
  @MaxLength(SCHEMA_NAME.maxLength)
  schema?: string;

  @IsOptional() @IsBoolean() migrationsRun?: boolean;

  @IsOptional()
  @ValidateIf((_, v) => v !== false)
  @ValidateNested()
  @Type(() => WorkerOptionsDto)
  worker?: false | WorkerOptionsDto;

  @IsOptional() @IsString() @MinLength(1) @MaxLength(200) nodeId?: string;
  @IsOptional() @IsDuration(10) heartbeatInterval?: Duration;
  @IsOptional() @IsDuration(MIN_NODE_TIMEOUT_MS) nodeTimeout?: Duration;
  @IsOptional() @ValidateNested() @Type(() => RetentionOptionsDto) retention?: RetentionOptionsDto;
  @IsOptional() @IsDuration(0) shutdownTimeout?: Duration;
  @IsOptional() @IsIn(['synchronous', 'asynchronous']) activityCommit?: 'synchronous' | 'asynchronous';
  @IsOptional() @ValidateIf((_, v) => v !== false) @IsDuration(1) statementTimeout?: Duration | false;
  @IsOptional() @IsDuration(1) lockTimeout?: Duration;
  @IsOptional() @IsDuration(1) connectTimeout?: Duration;
  @IsOptional() @IsBoolean() keepAlive?: boolean;
  @IsOptional() @IsBoolean() transactionPooler?: boolean;
}
