import { Column, CreateDateColumn, Entity, PrimaryGeneratedColumn } from 'typeorm';

export type ArticleStatus = 'submitted' | 'summarized' | 'published' | 'rejected';

@Entity('articles')
export class Article {
  @PrimaryGeneratedColumn()
  id: number;

  @Column({ type: 'varchar', length: 200 })
  title: string;

  @Column({ type: 'text' })
  body: string;

  @Column({ type: 'varchar', length: 20, default: 'submitted' })
  status: ArticleStatus;

  /** Bumped by each edit (`PUT /articles/:id`); the debounced `index_article` run gets the last one. */
  @Column({ type: 'integer', default: 0 })
  rev: number;

  /** Written by the `summarize` step of `process_article`. */
  @Column({ type: 'text', nullable: true })
  summary: string | null;

  /**
   * The revision `summary` is of: written with it by `summarize`, and again by `catch_up` when a
   * save during processing (`PUT /articles/:id`) reached the run.
   */
  @Column({ name: 'processed_rev', type: 'integer', nullable: true })
  processedRev: number | null;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;
}
