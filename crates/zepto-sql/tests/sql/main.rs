//! zepto-sql's integration tests, one test binary: each file below was a binary of its own,
//! and every one linked the whole engine again (27 links of ~70 MB: about 2 GB of a CI
//! clone's disk, and a link each for every change to the engine). Tests share no process
//! state (no environment, no globals), so running them side by side in one process changes
//! nothing they check.

mod common;

mod accumulators;
mod asof_outer;
mod asof_residual;
mod block_summaries;
mod chunked_results;
mod copy_client;
mod dedup;
mod deep_input;
mod distributed;
mod engine;
mod in_lists;
mod infinite_time;
mod latest_memo;
mod listing_aggregates;
mod materialized_views;
mod narrow_blocks;
mod no_panic;
mod not_distinct;
mod packed_partitions;
mod parallel_aggregate;
mod partitioned_joins;
mod pg_names;
mod product_sums;
mod run_context;
mod system_catalogs;
mod tenant_scope;
mod time_topn;
mod time_zones;
mod topn;
mod txn;
mod txn_ddl;
mod vector_index;
mod vectors;
