//! Text files read and written through the client (`fs/read_text_file`, `fs/write_text_file`)
//! when it offers them: an editor's buffers, unsaved changes included, are what the model
//! reads and what its edits change. golato's own checks of each path come first (see
//! `golato::builtin::TextFiles`).

use std::path::{Path, PathBuf};

use agent_client_protocol::v1::schema::{
    FileSystemCapabilities, ReadTextFileRequest, WriteTextFileRequest,
};
use futures::future::BoxFuture;

use super::Connection;

/// The client's files for one session.
pub(crate) struct ClientFiles {
    pub(crate) connection: Connection,
    pub(crate) session: String,
}

impl std::fmt::Debug for ClientFiles {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientFiles")
            .field("session", &self.session)
            .finish_non_exhaustive()
    }
}

impl ClientFiles {
    /// The client's files for `session`, if it offers reading and writing them both (one
    /// without the other would leave the model's view and its edits out of step).
    pub(crate) fn offered(
        connection: &Connection,
        session: &str,
        offered: Option<&FileSystemCapabilities>,
    ) -> Option<ClientFiles> {
        let offered = offered?;
        (offered.read_text_file && offered.write_text_file).then(|| ClientFiles {
            connection: connection.clone(),
            session: session.to_owned(),
        })
    }
}

fn failed(what: &str, error: &agent_client_protocol::Error) -> String {
    format!("the client could not {what} it ({})", error.message)
}

/// How long the client has to answer `fs/read_text_file` or `fs/write_text_file`: one that
/// never answers would keep the call, and the session, busy for good.
const ANSWER_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(60);

fn unanswered(method: &str) -> String {
    format!(
        "the client did not answer {method} within {} s",
        ANSWER_TIMEOUT.as_secs()
    )
}

impl golato::builtin::TextFiles for ClientFiles {
    fn read(&self, path: &Path) -> BoxFuture<'static, Result<String, String>> {
        let sent = self.connection.send_request(ReadTextFileRequest::new(
            self.session.clone(),
            PathBuf::from(path),
        ));
        Box::pin(async move {
            tokio::time::timeout(ANSWER_TIMEOUT, sent.block_task())
                .await
                .map_err(|_| unanswered("fs/read_text_file"))?
                .map(|response| response.content)
                .map_err(|error| failed("read", &error))
        })
    }

    fn write(&self, path: &Path, text: String) -> BoxFuture<'static, Result<(), String>> {
        let sent = self.connection.send_request(WriteTextFileRequest::new(
            self.session.clone(),
            PathBuf::from(path),
            text,
        ));
        Box::pin(async move {
            tokio::time::timeout(ANSWER_TIMEOUT, sent.block_task())
                .await
                .map_err(|_| unanswered("fs/write_text_file"))?
                .map(drop)
                .map_err(|error| failed("write", &error))
        })
    }
}
