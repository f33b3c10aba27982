-- catalog_tools.position was written by every catalog write and read by nothing; finding the next
-- one cost a pass over the catalog's rows in each write's transaction (~68 ms at 100,000 tools).
-- No longer written. Nullable rather than dropped, so a replica of the previous release, which
-- still writes it, keeps working during a rolling upgrade; a later release drops it.
ALTER TABLE "catalog_tools" ALTER COLUMN "position" DROP NOT NULL;
