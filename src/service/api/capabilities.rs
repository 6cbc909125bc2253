//! What this host serves: the opt-in capabilities switched on in its
//! configuration. The manifest, `connectionStatus`, the federated gates, the
//! host's analytics route and the tracker's optional collectors read them.

use super::functions::{Capability, Function};
use crate::config::Config;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Capabilities {
    leads: bool,
    meta_ads: bool,
    meta_leads: bool,
    site_map: bool,
    visitor_profiles: bool,
    people: bool,
    tracked_links: bool,
}

impl Capabilities {
    pub fn from_config(config: &Config) -> Capabilities {
        Capabilities {
            leads: config.federation_leads,
            meta_ads: config.federation_meta_ads && config.federation_leads,
            // Start-up refuses metaLeads without both (LA-01); the guard keeps the rule here too.
            meta_leads: config.federation_meta_leads && config.federation_meta_ads && config.federation_leads,
            site_map: config.federation_site_map,
            visitor_profiles: config.federation_visitor_profiles,
            people: config.federation_people,
            tracked_links: config.federation_tracked_links,
        }
    }

    pub fn serves(&self, capability: Capability) -> bool {
        match capability {
            Capability::Core => true,
            Capability::Leads => self.leads,
            Capability::MetaAds => self.meta_ads,
            Capability::MetaLeads => self.meta_leads,
            Capability::SiteMap => self.site_map,
            Capability::VisitorProfiles => self.visitor_profiles,
            Capability::People => self.people,
            Capability::TrackedLinks => self.tracked_links,
        }
    }

    /// The capability names the manifest and `connectionStatus` advertise.
    pub fn names(&self) -> Vec<&'static str> {
        let mut caps = vec!["configure"];
        if self.leads {
            caps.push("leads");
        }
        if self.meta_ads {
            caps.push("metaAds");
        }
        for (capability, name) in [
            (Capability::MetaLeads, "metaLeads"),
            (Capability::SiteMap, "siteMap"),
            (Capability::VisitorProfiles, "visitorProfiles"),
            (Capability::People, "people"),
            (Capability::TrackedLinks, "trackedLinks"),
        ] {
            // Advertised only while switched on and backed by a served function
            // (a host without a capability's functions advertises none of it).
            let backed = Function::ALL.iter().any(|f| f.spec().capability == capability);
            if self.serves(capability) && backed {
                caps.push(name);
            }
        }
        caps
    }
}
