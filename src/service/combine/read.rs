//! Reads that arrive together are read together: the same queue as a
//! combined write, run on the read pool. A request queues its item; one
//! read takes every item queued when it runs and answers them all with one
//! statement, and items arriving meanwhile wait for the next one. Under
//! load this keeps one pool connection busy where each request would have
//! held its own (and, on PostgreSQL, one round trip where there were as
//! many as requests). The read does not wait for the durability of the
//! commits it saw (`Db::run_unsettled`): it is a check before a write, and
//! its caller waits (`Context::settle`) before answering from a finding.

use super::Combiner;
use crate::db::AnyConnection;
use crate::error::{Error, Result};
use crate::service::context::Context;

/// Reads every item of a combined read: one answer per item, in their order.
pub type ManyReads<I, O> = fn(&mut AnyConnection, &[I]) -> Result<Vec<O>>;

impl<I: Send + 'static, O: Send + 'static> Combiner<I, O> {
    /// Reads `item` with whatever else is queued. Past `limit` waiting
    /// items it is read alone rather than refused: a read costs no write.
    pub async fn read(&self, cx: &Context, item: I, limit: usize, many: ManyReads<I, O>) -> Result<O> {
        let (reply, answer) = tokio::sync::oneshot::channel();
        let queued = {
            let mut q = self.lock();
            if q.items.len() >= limit {
                Err(item)
            } else {
                q.items.push((item, reply));
                Ok(!std::mem::replace(&mut q.scheduled, true))
            }
        };
        let schedule = match queued {
            Ok(schedule) => schedule,
            Err(item) => return cx.read_unsettled(move |c| one_of(many(c, &[item])?)).await,
        };
        if schedule {
            tokio::spawn(self.clone().read_queued(cx.clone(), many));
        }
        answer.await.unwrap_or_else(|_| Err(Error::unavailable("a combined read was dropped")))
    }

    /// One read of the items queued when it starts. The queue is taken on
    /// the pool's connection, so items that arrive while it waits for one
    /// are read with it.
    async fn read_queued(self, cx: Context, many: ManyReads<I, O>) {
        let queue = self.clone();
        let read = cx
            .read_unsettled(move |c| {
                let (items, replies): (Vec<I>, Vec<_>) = queue.take().into_iter().unzip();
                let answers = many(c, &items);
                Ok((replies, answers))
            })
            .await;
        match read {
            Ok((replies, Ok(answers))) if answers.len() == replies.len() => {
                for (reply, a) in replies.into_iter().zip(answers) {
                    let _ = reply.send(Ok(a));
                }
            }
            Ok((replies, answers)) => {
                let e = answers.err().unwrap_or_else(|| Error::internal("a combined read answered a wrong count"));
                for reply in replies {
                    let _ = reply.send(Err(e.clone()));
                }
            }
            // The pool refused before the read ran: the items it would have taken.
            Err(e) => {
                for (_, reply) in self.take() {
                    let _ = reply.send(Err(e.clone()));
                }
            }
        }
    }
}

fn one_of<O>(answers: Vec<O>) -> Result<O> {
    answers.into_iter().next().ok_or_else(|| Error::internal("a read answered nothing"))
}
