import { BadRequestException, Controller, Post } from '@nestjs/common';
import { IdempotentStart } from 'nestjs-durable';
import { SendNewsletter, type NewsletterInput } from './send-newsletter.workflow';

/**
 * `POST /newsletters` `{ subject, articleIds }` with an `Idempotency-Key` header: starts
 * `send_newsletter` once per key. A retry with the same key and body answers the same run
 * (`outcome: 'useExisting'`); the same key with another body answers 422, no header 400.
 */
@Controller('newsletters')
export class NewslettersController {
  @Post()
  @IdempotentStart(SendNewsletter, { input: (req: { body?: unknown }) => newsletterInput(req.body) })
  send() {
    // nothing to add: the answer is { runId, outcome }
  }
}

/** The body as the workflow's input, or 400. */
function newsletterInput(body: unknown): NewsletterInput {
  const { subject, articleIds } = (body ?? {}) as Partial<NewsletterInput>;
  if (typeof subject !== 'string' || subject.trim() === '') throw new BadRequestException('subject must be a non-empty string');
  if (!Array.isArray(articleIds) || !articleIds.every((id) => Number.isInteger(id))) {
    throw new BadRequestException('articleIds must be an array of article ids');
  }
  return { subject, articleIds };
}
