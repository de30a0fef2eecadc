// Prisma 7 reads the datasource URL from here instead of schema.prisma. `prisma generate` does not
// connect, so the URL falls back to the local default rather than failing when DATABASE_URL is unset.
import { defineConfig } from 'prisma/config';

export default defineConfig({
  schema: 'prisma/schema.prisma',
  migrations: { path: 'prisma/migrations' },
  datasource: {
    url: process.env.DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/conveyor',
  },
});
