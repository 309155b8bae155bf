//! One endpoint at a time: the upstream's address recorded (unless it is a
//! controller's), the advertised one put in its place.

use kafka_protocol::protocol::StrBytes;

use super::{Advertised, Learned};

/// Records learned addresses and rewrites endpoints in place.
pub(super) struct Mapper<'a> {
    pub(super) to: &'a Advertised,
    /// False for controller endpoints: rewritten, never learned.
    pub(super) learn: bool,
    pub(super) learned: Vec<Learned>,
    pub(super) unmapped: Vec<i32>,
    /// Distinct error codes other than 0 seen in the response.
    pub(super) errors: Vec<i16>,
    /// Topic ids and names seen (Metadata v10 on).
    pub(super) topic_ids: Vec<(uuid::Uuid, String)>,
}

impl Mapper<'_> {
    /// Records an error code of the response (0, no error, is not one).
    pub(super) fn error(&mut self, code: i16) {
        if code != 0 && !self.errors.contains(&code) {
            self.errors.push(code);
        }
    }

    /// Rewrites one endpoint; false when the node is outside the range and
    /// the endpoint must be dropped.
    pub(super) fn endpoint<P: PortField>(
        &mut self,
        node_id: i32,
        host: &mut StrBytes,
        port: &mut P,
    ) -> bool {
        if self.learn {
            self.learned.push(Learned {
                node_id,
                host: host.to_string(),
                port: port.get(),
            });
        }
        match self.to.endpoint(node_id) {
            Some((h, p)) => {
                *host = h;
                port.set(p);
                true
            }
            None => {
                self.unmapped.push(node_id);
                false
            }
        }
    }
}

/// Port fields are `int32` in client APIs and `uint16` in KRaft ones.
pub(super) trait PortField {
    fn get(&self) -> i32;
    fn set(&mut self, port: u16);
}

impl PortField for i32 {
    fn get(&self) -> i32 {
        *self
    }
    fn set(&mut self, port: u16) {
        *self = i32::from(port);
    }
}

impl PortField for u16 {
    fn get(&self) -> i32 {
        i32::from(*self)
    }
    fn set(&mut self, port: u16) {
        *self = port;
    }
}
