//! One decoded request judged topic by topic: forwarded, answered by the
//! proxy, or split (the allowed part forwarded, its response merged and
//! judged by what it lists).

use bytes::{BufMut, Bytes, BytesMut};
use kafka_protocol::messages::{ApiKey, ResponseHeader};

use super::listing::Listing;
use super::merge::Denied;
use super::{Merge, Policed, Refused, Shown, TopicIds, Topics};
use crate::codec::{decode, encode, with_header};

/// One topic's fate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Verdict {
    Allowed,
    Denied,
    /// Named by an id the proxy has not learned.
    Unknown,
    /// Named both by name and by id.
    Invalid,
}

/// [`Request::judge`], as a plain function (one per API in a table).
pub(super) fn judge<T: Topics>(
    at: &Request<'_>,
    body: &mut Bytes,
    version: i16,
    keep: &mut dyn FnMut(&str) -> bool,
) -> Result<Policed, String> {
    at.judge::<T>(body, version, keep)
}

/// The request being policed.
pub(super) struct Request<'a> {
    pub(super) frame: &'a Bytes,
    pub(super) body_at: usize,
    pub(super) api: ApiKey,
    pub(super) correlation_id: i32,
    pub(super) ids: &'a TopicIds,
}

impl Request<'_> {
    /// Each topic's verdict, in the order of [`Topics::names`].
    fn verdicts<T: Topics>(&self, request: &T, keep: &mut dyn FnMut(&str) -> bool) -> Vec<Verdict> {
        let later = request.judged_in_response();
        let invalid = request.invalid();
        request
            .resolved(self.ids)
            .into_iter()
            .enumerate()
            .map(|(i, name)| match name {
                _ if invalid.get(i) == Some(&true) => Verdict::Invalid,
                _ if later.get(i) == Some(&true) => Verdict::Allowed,
                None => Verdict::Unknown,
                Some(name) if keep(&name) => Verdict::Allowed,
                Some(_) => Verdict::Denied,
            })
            .collect()
    }

    /// Judges a decoded request of type `T`.
    fn judge<T: Topics>(
        &self,
        body: &mut Bytes,
        version: i16,
        keep: &mut dyn FnMut(&str) -> bool,
    ) -> Result<Policed, String> {
        let request: T = decode(body, version)?;
        if request.names_every_topic() {
            let refused = Refused {
                denied: request,
                unknown: None,
                invalid: None,
            };
            return Ok(Policed::Answer {
                frame: self.answer(&refused, version)?,
                denied: 1,
            });
        }
        let verdicts = self.verdicts(&request, keep);
        let count = |v: Verdict| verdicts.iter().filter(|k| **k == v).count();
        let denied = count(Verdict::Denied);
        let refused = verdicts.len() - count(Verdict::Allowed);
        let hide = request.lists_all(version);
        let by_id = request.judged_in_response().contains(&true);
        let filtered = <T::Response as Shown>::FILTERED;
        if refused == 0 && !filtered && !hide && !by_id {
            return Ok(Policed::Forward);
        }
        let part = |wanted: Verdict| {
            let mut verdict = verdicts.iter();
            let mut part = request.clone();
            let others = wanted == Verdict::Allowed;
            part.retain(&mut |_| verdict.next() == Some(&wanted), others);
            part
        };
        let some = |v: Verdict| (count(v) > 0).then(|| part(v));
        let refusal = Refused {
            denied: part(Verdict::Denied),
            unknown: some(Verdict::Unknown),
            invalid: some(Verdict::Invalid),
        };
        if refused > 0 && !T::SPLIT {
            let whole = Refused {
                denied: request,
                unknown: None,
                invalid: None,
            };
            let frame = self.answer(&whole, version)?;
            return Ok(Policed::Answer { frame, denied });
        }
        let every = refused == verdicts.len() && !hide && !request.names_others();
        if every && request.answered_whole(version) {
            let frame = self.answer(&refusal, version)?;
            return Ok(Policed::Answer { frame, denied });
        }
        let allowed = part(Verdict::Allowed);
        let listing = match request.asked(version) {
            _ if !filtered => Listing::Unfiltered,
            None => Listing::All,
            Some(_) => Listing::Asked(allowed.asked(version).unwrap_or_default()),
        };
        let forwarded = match refused {
            0 => None,
            _ => Some(self.reframe(&allowed, version)?),
        };
        let refusal = Denied {
            allowed,
            refused: refusal,
            listing,
            by_id,
        };
        Ok(Policed::Split {
            request: forwarded,
            merge: self.merge(refusal, refused > 0, version)?,
            denied,
        })
    }

    /// What the response to a split request is merged with: `refusal`,
    /// its entries encoded now when they go first in the streamed response
    /// (only when some topics are `refused`).
    fn merge<T: Topics>(
        &self,
        refusal: Denied<T>,
        refused: bool,
        version: i16,
    ) -> Result<Merge, String> {
        let prepended = if refused {
            let refused = &refusal.refused;
            T::prepended(&refused.denied, refused.unknown.as_ref(), version)?
        } else {
            None
        };
        Ok(Merge {
            api: self.api,
            version,
            correlation_id: self.correlation_id,
            refusal: Box::new(refusal),
            prepended,
        })
    }

    /// The proxy's answer refusing every topic of `refused`.
    fn answer<T: Topics>(&self, refused: &Refused<T>, version: i16) -> Result<Bytes, String> {
        let mut response = T::Response::default();
        refused.refuse(&mut response);
        let body = encode(&response, version)?;
        let mut header = ResponseHeader::default();
        header.correlation_id = self.correlation_id;
        with_header(&header, self.api.response_header_version(version), &body)
    }

    /// The request's own header bytes, then `body` encoded.
    fn reframe<T: Topics>(&self, body: &T, version: i16) -> Result<Bytes, String> {
        let head = &self.frame[4..self.body_at];
        let size = body.compute_size(version).map_err(|e| e.to_string())?;
        let total = i32::try_from(head.len() + size).map_err(|_| "request too large".to_owned())?;
        let mut out = BytesMut::with_capacity(4 + head.len() + size);
        out.put_i32(total);
        out.put_slice(head);
        body.encode(&mut out, version).map_err(|e| e.to_string())?;
        Ok(out.freeze())
    }
}
