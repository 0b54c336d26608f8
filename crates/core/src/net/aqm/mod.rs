//! Active queue management of a link: RED (decides on arrival, analytic) and CoDel
//! (decides at dequeue, event-driven).
pub mod codel;
pub mod red;
