//! A response body written page by page by a task of its own: each page is
//! one read of its own, at most two pages wait in the channel, so a download
//! of any size holds a few pages of memory (the analytics export, `leads.csv`,
//! the CSV of a paged report). The status is sent before the first page: a
//! failure half-way ends the body early (the client sees a short file, and the
//! failure is logged with its code).

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use actix_web::web::Bytes;
use futures_core::Stream;

use crate::error::Result;

type Chunk = std::result::Result<Bytes, actix_web::Error>;

/// The body: what the task sends.
pub struct PagedBody(tokio::sync::mpsc::Receiver<Chunk>);

impl PagedBody {
    /// A sender and its body, `capacity` chunks waiting at most: any task
    /// writes the body (the pages here, the live stream); it ends when the
    /// sender is dropped, and a failed send tells the task the client left.
    pub fn new(capacity: usize) -> (tokio::sync::mpsc::Sender<Chunk>, PagedBody) {
        let (tx, rx) = tokio::sync::mpsc::channel(capacity);
        (tx, PagedBody(rx))
    }
}

impl Stream for PagedBody {
    type Item = Chunk;
    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.0.poll_recv(cx)
    }
}

/// Runs `next` from `start` until it answers `None`: each `Some((bytes, state))`
/// is one page of the body and the state of the next call.
pub fn paged<S, F, Fut>(start: S, mut next: F) -> PagedBody
where
    S: 'static,
    F: FnMut(S) -> Fut + 'static,
    Fut: Future<Output = Result<Option<(Bytes, S)>>> + 'static,
{
    let (tx, body) = PagedBody::new(2);
    actix_web::rt::spawn(async move {
        let mut state = Some(start);
        while let Some(current) = state.take() {
            let chunk = match next(current).await {
                Ok(Some((bytes, s))) => {
                    state = Some(s);
                    Ok(bytes)
                }
                Ok(None) => return,
                Err(e) => {
                    tracing::warn!(code = e.code.as_str(), "a streamed answer ended early");
                    Err(actix_web::error::ErrorInternalServerError(e.code.as_str()))
                }
            };
            let failed = chunk.is_err();
            if tx.send(chunk).await.is_err() || failed {
                return;
            }
        }
    });
    body
}
