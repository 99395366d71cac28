/* Constants for the CEnumType tests (tests/python/test_enum_type.py). Their
   values are chosen so that none equals its position in the CEnumType. */
#ifndef OPWEAVE_TEST_CENUM_H
#define OPWEAVE_TEST_CENUM_H

#define MILLION 1000000
#define BILLION 1000000000
#define TWO_BILLIONS 2000000000

#endif
